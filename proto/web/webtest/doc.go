// Package webtest makes the bank that the web page's tests, its
// end-to-end test in a browser and its benchmark look at: accounts chem
// (projects chem.lab1 and chem.lab2, split by HFS 60/40) and bio (project
// bio.lab1), machine hpc1, users amy (member of chem.lab1) and bob (member
// of bio.lab1), and jobs on days of their own.
package webtest
