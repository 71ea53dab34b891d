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
//     bank's directory, runs the first start of the documentation, runs
//     the server by hand as the documentation says to without systemd, and
//     leaves the bank behind when purged; the .rpm holds the same files;
//   - contrib/packaging/version.sh's versions of git's tags;
//   - make image: the container image's configuration and files, and the
//     image run with podman as the documentation does;
//   - make release in a tagged clone: lintian finds no error in the .deb,
//     the binaries are stripped and static, and SHA256SUMS holds them all.
//
// The tests that need a tool (systemd-analyze, dpkg, rpm, podman,
// lintian) skip without it, except under INGOT_E2E=1, where they fail; the
// package test installs ingot system-wide, so it runs only under
// INGOT_E2E=1, as root, on a host that has no ingot, and the release test,
// which builds a whole release for minutes, only under INGOT_E2E=1.
package contrib
