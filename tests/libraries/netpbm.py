"""Checks the pixels `netpbm.dx` read (the `netpbm` library) against the bytes of
`data/small.ppm` parsed here: the header's width and height, then rows of (red, green, blue)
bytes. Runs in the folder holding the `.npy` files, beside a copy of `data/`."""

import numpy as np

from checks import failures, finish, load, same

with open("data/small.ppm", "rb") as f:
    raw = f.read()
magic, size, depth, pixels = raw.split(b"\n", 3)
if magic != b"P6" or depth != b"255":
    failures.append(f"data/small.ppm: header {magic!r} ... {depth!r}, not a P6 image of depth 255")
cols, rows = map(int, size.split())
want = np.frombuffer(pixels, np.uint8).reshape(rows, cols, 3).astype(np.uint32)
same("pixels of data/small.ppm", load("small_pixels"), want)

finish("netpbm", "the bytes of data/small.ppm")
