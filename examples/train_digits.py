"""Train the digits CNN in numpy and write its weights as the package's ONNX file.

    python examples/train_digits.py [--epochs 30] [--seed 0] [-o vdla/compiler/graph/data/digits_cnn.onnx]

The network and the data split are :mod:`vdla.compiler.graph.digits`' (scikit-learn's
bundled 8x8 digits: no download). Training is plain numpy: convolutions as im2col
matrix products, softmax cross-entropy, Adam, mini-batches of 32, a little weight decay.
The result is exported with :func:`vdla.compiler.graph.onnx_export.save_onnx` from the
same graph builder the compiler uses, then checked: the exported model's held-out
accuracy (run by the graph's numpy reference) must equal the trainer's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from vdla.compiler.graph.digits import LAYERS, WEIGHTS_FILE, accuracy, digits_cnn, load_split, weight_shapes
from vdla.compiler.graph.onnx_export import save_onnx
from vdla.compiler.graph.reference import run

K = 3  # every conv is 3x3, stride 1, padding 1


def im2col(x: np.ndarray) -> np.ndarray:
    """(N, C, H, W) -> (N, C*9, H*W) patches of the zero-padded input."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i:i + h, j:j + w] for i in range(K) for j in range(K)], axis=2)
    return cols.reshape(n, c * K * K, h * w)


def col2im(cols: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    n, c, h, w = shape
    cols = cols.reshape(n, c, K * K, h, w)
    xp = np.zeros((n, c, h + 2, w + 2), cols.dtype)
    for t, (i, j) in enumerate((i, j) for i in range(K) for j in range(K)):
        xp[:, :, i:i + h, j:j + w] += cols[:, :, t]
    return xp[:, :, 1:-1, 1:-1]


def forward(p: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, list]:
    cache = []
    for name, kind, _ in LAYERS:
        if kind == "conv":
            cols = im2col(x)
            w = p[f"{name}.weight"]
            y = np.einsum("ok,nkp->nop", w.reshape(w.shape[0], -1), cols) + p[f"{name}.bias"][None, :, None]
            y = y.reshape(x.shape[0], w.shape[0], *x.shape[2:])
            cache.append((name, kind, (cols, x.shape)))
        elif kind == "maxpool":
            n, c, h, w_ = x.shape
            win = x.reshape(n, c, h // 2, 2, w_ // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w_ // 2, 4)
            arg = win.argmax(-1)
            y = win.max(-1).reshape(n, -1)
            cache.append((name, kind, (arg, x.shape)))
        else:
            y = x @ p[f"{name}.weight"].T + p[f"{name}.bias"]
            cache.append((name, kind, x))
        if name != LAYERS[-1][0] and kind != "maxpool":
            cache.append((name, "relu", y > 0))
            y = np.maximum(y, 0)
        x = y
    return x, cache


def backward(p: dict[str, np.ndarray], cache: list, dy: np.ndarray) -> dict[str, np.ndarray]:
    g: dict[str, np.ndarray] = {}
    for name, kind, c in reversed(cache):
        if kind == "relu":
            dy = dy * c
        elif kind == "dense":
            g[f"{name}.weight"], g[f"{name}.bias"] = dy.T @ c, dy.sum(0)
            dy = dy @ p[f"{name}.weight"]
        elif kind == "maxpool":
            arg, shape = c
            n, ch, h, w = shape
            d = dy.reshape(n, ch, h // 2, w // 2)
            win = np.zeros((n, ch, h // 2, w // 2, 4), dy.dtype)
            np.put_along_axis(win, arg[..., None], d[..., None], axis=-1)
            dy = win.reshape(n, ch, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(shape)
        else:
            cols, shape = c
            w = p[f"{name}.weight"]
            d = dy.reshape(dy.shape[0], dy.shape[1], -1)
            g[f"{name}.weight"] = np.einsum("nop,nkp->ok", d, cols).reshape(w.shape)
            g[f"{name}.bias"] = d.sum((0, 2))
            dy = col2im(np.einsum("ok,nop->nkp", w.reshape(w.shape[0], -1), d), shape)
    return g


def train(epochs: int = 30, seed: int = 0, lr: float = 2e-3, batch: int = 32, decay: float = 1e-4,
          log: bool = True) -> tuple[dict[str, np.ndarray], float]:
    xtr, ytr, xte, yte = load_split()
    rng = np.random.default_rng(seed)
    p = {k: (rng.standard_normal(s) * np.sqrt(2.0 / np.prod(s[1:]))).astype(np.float32) if len(s) > 1
         else np.zeros(s, np.float32) for k, s in weight_shapes().items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(a) for k, a in p.items()}
    step = 0
    for ep in range(epochs):
        order = rng.permutation(len(xtr))
        loss = 0.0
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            out, cache = forward(p, xtr[idx])
            z = out - out.max(1, keepdims=True)
            prob = np.exp(z) / np.exp(z).sum(1, keepdims=True)
            loss += float(-np.log(prob[np.arange(len(idx)), ytr[idx]] + 1e-12).sum())
            dy = prob
            dy[np.arange(len(idx)), ytr[idx]] -= 1
            grads = backward(p, cache, (dy / len(idx)).astype(np.float32))
            step += 1
            for k in p:
                gk = grads[k] + decay * p[k]
                m[k] = 0.9 * m[k] + 0.1 * gk
                v[k] = 0.999 * v[k] + 0.001 * gk * gk
                mh, vh = m[k] / (1 - 0.9**step), v[k] / (1 - 0.999**step)
                p[k] = (p[k] - lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
        acc = accuracy(forward(p, xte)[0], yte)
        if log:
            print(f"epoch {ep + 1:>2}: loss {loss / len(xtr):.4f}, held-out accuracy {100 * acc:.2f}%")
    return p, accuracy(forward(p, xte)[0], yte)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", type=Path, default=WEIGHTS_FILE)
    a = ap.parse_args(argv)
    print(f"training the digits CNN (seed {a.seed}, {a.epochs} epochs)")
    p, acc = train(a.epochs, a.seed)
    g = digits_cnn(1, p)
    a.output.parent.mkdir(parents=True, exist_ok=True)
    save_onnx(g, a.output)
    # the exported graph, run by the numpy reference at the held-out set's batch, must agree
    _, _, xte, yte = load_split()
    (out,) = run(digits_cnn(len(xte), p), {"image": xte}, check=False)
    got = accuracy(out, yte)
    print(f"wrote {a.output} ({a.output.stat().st_size} bytes); held-out accuracy {100 * got:.2f}% "
          f"(trainer {100 * acc:.2f}%)")
    return 0 if abs(got - acc) < 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
