// Package contrib holds no code: it is the home of the tests of what
// contrib/ gives an operator, as docs/operations.md describes it. They run
// make and the installed ingot as an operator would:
//
//   - make install puts each file where the documentation says, and keeps
//     an operator's config;
//   - systemd-analyze accepts the units as installed, and finds in the
//     service no exposure but those it leaves open on purpose;
//   - the restore procedure of docs/operations.md, run as written on a bank
//     served by the installed binary and backed up by the installed backup
//     script;
//   - make package: the .deb installs with dpkg, makes the user and the
//     bank's directory, runs the first start of the documentation, and
//     leaves the bank behind when purged; the .rpm holds the same files.
//
// The tests that need a tool (systemd-analyze, dpkg, rpm) skip without it,
// except under INGOT_E2E=1, where they fail; the package test installs
// ingot system-wide, so it runs only under INGOT_E2E=1, as root, on a host
// that has no ingot.
package contrib
