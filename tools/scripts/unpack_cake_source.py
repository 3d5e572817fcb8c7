#!/usr/bin/env python3
"""Unpacks the cake sampler's frozen source (trim_flashinfer.sh's cake_sampling.tar.xz) under a
folder, with tarfile's "data" filter where this Python has it (no absolute paths, links out
of the folder or device files). One body for h200_qualify_python.sh and aot_flashinfer.sh.

    unpack_cake_source.py ARCHIVE FOLDER
"""

import sys
import tarfile


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    with tarfile.open(argv[1]) as archive:
        archive.extractall(argv[2], **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
