#!/usr/bin/env python3
"""Unpacks the cake sampler's frozen source (trim_flashinfer.sh's cake_sampling.tar.xz) under a
folder. Only plain files and folders at relative paths inside it are unpacked: an archive with
an absolute path, a '..', a link or a device file is refused whole (exit 2), whether or not this
Python's tarfile has the "data" filter (Debian 12's 3.11.2 has not), which is applied too
where it exists. One body for h200_qualify_python.sh and aot_flashinfer.sh.

    unpack_cake_source.py ARCHIVE FOLDER
"""

import sys
import tarfile
from pathlib import PurePosixPath


def refusal(member: tarfile.TarInfo) -> str:
    """Why the member may not be unpacked, or ''."""
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts:
        return "its path leaves the folder"
    if not (member.isfile() or member.isdir()):
        return "it is not a plain file or folder"
    return ""


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    with tarfile.open(argv[1]) as archive:
        members = archive.getmembers()
        for member in members:
            if why := refusal(member):
                print(f"{argv[1]}: member {member.name!r} refused: {why}", file=sys.stderr)
                return 2
        archive.extractall(argv[2], members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
