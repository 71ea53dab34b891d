#!/bin/sh
# The version of ingot at the commit checked out: a semantic version
# (semver.org 2.0.0) made of git's release tags vX.Y.Z, which `ingot version`
# prints and the packages and release files are named by (the Makefile's
# VERSION):
#   on the tag vX.Y.Z                  X.Y.Z
#   N commits after the tag vX.Y.Z     X.Y.(Z+1)-dev.N+g<commit>
#   before the first tag               0.0.0-dev.N+g<commit>  (N commits in all)
# with .dirty added after the commit (+dirty on a tag) when tracked files
# differ from it. A version after a tag is one of the next patch release,
# as Go's pseudo-versions are: it sorts after X.Y.Z and before X.Y.(Z+1)
# for semver, and for dpkg and rpm, whose packages write -dev as ~dev (a
# '~' sorts before the end of a version). A tag with a pre-release
# (v1.0.0-rc.1) is its version; N commits after it, 1.0.0-rc.1.dev.N+g<commit>.
set -eu
case $(git describe --always --dirty) in
*-dirty) dirty=1 ;;
*) dirty= ;;
esac
if desc=$(git describe --tags --long --abbrev=7 --match 'v[0-9]*.[0-9]*.[0-9]*' 2>/dev/null); then
	# v1.2.3-rc.1-4-g0123abc: the tag, the commits since, the commit.
	tag=${desc%-*-g*}
	rest=${desc#"$tag"-}
	n=${rest%%-*}
	hash=${rest#*-}
	tag=${tag#v}
	if ! printf '%s\n' "$tag" | grep -Eq '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'; then
		echo "version.sh: the tag v$tag is not a release tag vX.Y.Z (or vX.Y.Z-PRERELEASE)" >&2
		exit 1
	fi
	if [ "$n" = 0 ]; then
		version=$tag
		hash=
	else
		case $tag in
		*-*) version=$tag.dev.$n ;;
		*) version=${tag%.*}.$((${tag##*.} + 1))-dev.$n ;;
		esac
	fi
else
	hash=g$(git rev-parse --short=7 HEAD)
	version=0.0.0-dev.$(git rev-list --count HEAD)
fi
build=$hash
if [ -n "$dirty" ]; then
	build=${build:+$build.}dirty
fi
echo "$version${build:++$build}"
