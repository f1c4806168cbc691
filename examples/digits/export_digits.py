"""Write digits.csv.gz, the data of this example, from scikit-learn's bundled
copy of the UCI optical-recognition-of-handwritten-digits test set (1,797
images of 8x8 pixels, values 0..16). Run once; the file is committed, so
the example and its test need neither scikit-learn nor a download.

One line per image: the label, then the 64 pixels, in a fixed shuffled
order (numpy's permutation with seed 0), so that batches mix the writers.

    pip install scikit-learn && python examples/digits/export_digits.py
"""
from __future__ import annotations

import gzip
import os

import numpy as np
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    d = load_digits()
    order = np.random.RandomState(0).permutation(len(d.target))
    X = d.data[order].astype(int)
    y = d.target[order].astype(int)
    # mtime=0: the same data gives the same bytes
    with gzip.GzipFile(os.path.join(HERE, "digits.csv.gz"), "wb", mtime=0) as f:
        for label, row in zip(y, X):
            f.write((",".join(map(str, [label, *row])) + "\n").encode())
    print(f"wrote {len(y)} images to digits.csv.gz")


if __name__ == "__main__":
    main()
