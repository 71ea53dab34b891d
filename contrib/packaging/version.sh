#!/bin/sh
# The version of the packages made from the commit checked out (make
# package). dpkg and rpm must see a later commit as newer, so the version
# grows with the commit's time; '~' sorts before the end of a version
# (0.0.0~x is older than 0.0.0) and '+' after it (X.Y.Z+x is newer than
# X.Y.Z), in dpkg and rpm alike:
#   on a tag vX.Y.Z                  X.Y.Z
#   commits after the tag vX.Y.Z     X.Y.Z+git<commit time, UTC>.<hash>
#   no tag yet                       0.0.0~git<commit time, UTC>.<hash>
# with .dirty added when tracked files differ from the commit.
set -eu
hash=$(git rev-parse --short HEAD)
time=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)
if tag=$(git describe --tags --abbrev=0 2>/dev/null); then
	if [ "$(git rev-list -n 1 "$tag")" = "$(git rev-parse HEAD)" ]; then
		version=${tag#v}
	else
		version=${tag#v}+git$time.$hash
	fi
else
	version=0.0.0~git$time.$hash
fi
case $(git describe --always --dirty) in
*-dirty) version=$version.dirty ;;
esac
echo "$version"
