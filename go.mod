module github.com/ingot-hpc/ingot

go 1.26.8

require (
	github.com/shopspring/decimal v1.6.0
	go.etcd.io/bbolt v1.5.0
)

require golang.org/x/sys v0.49.0 // indirect
