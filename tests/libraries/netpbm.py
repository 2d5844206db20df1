"""Checks the pixels `netpbm.dx` read (the `netpbm` library) against the bytes of
`data/small.ppm` parsed here: the header's width and height, then rows of (red, green, blue)
bytes. Runs in the folder holding the `.npy` files, beside a copy of `data/`."""

import sys

import numpy as np

with open("data/small.ppm", "rb") as f:
    raw = f.read()
magic, size, depth, pixels = raw.split(b"\n", 3)
cols, rows = map(int, size.split())
want = np.frombuffer(pixels, np.uint8).reshape(rows, cols, 3).astype(np.uint32)
got = np.load("small_pixels.npy")
if magic != b"P6" or depth != b"255" or got.shape != want.shape or not np.array_equal(got, want):
    print(f"pixels of data/small.ppm:\n  dx:    {got.tolist()}\n  numpy: {want.tolist()}")
    sys.exit(1)
