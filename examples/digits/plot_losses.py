"""Draw losses.png (the README's figure) from the loss files of the four
runs in OUT: Clojure and Python, 2 workers (the two shares of each step's
loss added) and one process. Needs matplotlib; run once after the runs:

    python examples/digits/plot_losses.py OUT
"""
from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def losses(path: str) -> list:
    with open(path) as f:
        return [float(line.split()[1]) for line in f]


def main(out: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    styles = {"clj": ("Clojure", "-"), "py": ("Python", ":")}
    for lang, (name, style) in styles.items():
        shares = [losses(os.path.join(out, f"losses-{lang}-dist_sync-{r}.txt")) for r in (0, 1)]
        dist = [a + b for a, b in zip(*shares)]
        single = losses(os.path.join(out, f"losses-{lang}-local-0.txt"))
        ax.plot(dist, style, lw=2.5 if lang == "clj" else 1.5,
                label=f"{name}, 2 workers x 1 server (dist_sync)")
        ax.plot(single, "--" if lang == "clj" else "-.", lw=1,
                label=f"{name}, one process (local)")
    ax.set_xlabel("step (global batch of 200 images)")
    ax.set_ylabel("batch cross-entropy")
    ax.set_yscale("log")
    ax.set_title("MLP on the digits images: loss per step")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "losses.png"))
    print("wrote losses.png")


if __name__ == "__main__":
    main(sys.argv[1])
