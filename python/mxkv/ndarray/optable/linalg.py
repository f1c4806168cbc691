"""The ``linalg_*`` operators (``mx.nd.linalg.gemm`` is ``linalg_gemm``): each
works on the last two axes, batched over the leading ones, as MXNet 1.9.1's
(float32/float64 inputs).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._util import MXNetValueError
from .registry import OpDef, Param, register


def _mat(a: Any, opname: str, square: bool = False) -> None:
    if a.ndim < 2:
        raise MXNetValueError(f"{opname}: needs matrices (at least 2-d), got shape "
                              f"{tuple(a.shape)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise MXNetValueError(f"{opname}: needs square matrices, got shape {tuple(a.shape)}")


def _t(xp: Any, a: Any, flag: bool) -> Any:
    return xp.swapaxes(a, -1, -2) if flag else a


def _moved(xp: Any, a: Any, axis: int) -> Any:
    """``a`` with its row axis ``axis`` moved to -2 (MXNet's ``axis`` parameter)."""
    return a if axis in (-2, a.ndim - 2) else xp.moveaxis(a, axis, -2)


def _gemm2(xp: Any, A: Any, B: Any, transpose_a: bool, transpose_b: bool, alpha: float,
           axis: int) -> Any:
    _mat(A, "linalg_gemm2")
    _mat(B, "linalg_gemm2")
    a, b = _moved(xp, A, axis), _moved(xp, B, axis)
    res = alpha * xp.matmul(_t(xp, a, transpose_a), _t(xp, b, transpose_b))
    return res if axis in (-2, A.ndim - 2) else xp.moveaxis(res, -2, axis)


def _gemm(xp: Any, A: Any, B: Any, C: Any, transpose_a: bool, transpose_b: bool, alpha: float,
          beta: float, axis: int) -> Any:
    res = _gemm2(xp, A, B, transpose_a, transpose_b, alpha, axis)
    if res.shape != C.shape:
        raise MXNetValueError(f"linalg_gemm: C has shape {tuple(C.shape)}, op(A) op(B) has "
                              f"{tuple(res.shape)}")
    return res + beta * C


_T = (Param("transpose_a", "boolean", False), Param("transpose_b", "boolean", False))
register(OpDef(name="linalg_gemm", inputs=("A", "B", "C"),
               params=_T + (Param("alpha", "double", 1.0), Param("beta", "double", 1.0),
                            Param("axis", "int", -2)),
               impl=_gemm, aliases=("_linalg_gemm",), namespace="linalg", same_dtype=True,
               doc="``alpha * op(A) op(B) + beta * C``.", family="linalg"))
register(OpDef(name="linalg_gemm2", inputs=("A", "B"),
               params=_T + (Param("alpha", "double", 1.0), Param("axis", "int", -2)),
               impl=_gemm2, aliases=("_linalg_gemm2",), namespace="linalg", same_dtype=True,
               doc="``alpha * op(A) op(B)``.", family="linalg"))


def _potrf(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_potrf", True)
    return xp.linalg.cholesky(A)


def _potri(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_potri", True)
    linv = xp.linalg.inv(A)
    return xp.matmul(_t(xp, linv, True), linv)


def _tri_solve(xp: Any, A: Any, B: Any, transpose: bool, rightside: bool, lower: bool,
               alpha: float, opname: str) -> Any:
    _mat(A, opname, True)
    a = xp.tril(A) if lower else xp.triu(A)
    a = _t(xp, a, transpose)
    if opname == "linalg_trmm":
        return alpha * (xp.matmul(B, a) if rightside else xp.matmul(a, B))
    if rightside:  # X a = alpha B  ->  a^T X^T = alpha B^T
        return _t(xp, xp.linalg.solve(_t(xp, a, True), alpha * _t(xp, B, True)), True)
    return xp.linalg.solve(a, alpha * B)


_TRI = (Param("transpose", "boolean", False), Param("rightside", "boolean", False),
        Param("lower", "boolean", True), Param("alpha", "double", 1.0))
for _name, _impl, _doc in (
        ("potrf", _potrf, "The lower Cholesky factor of symmetric positive definite ``A``."),
        ("potri", _potri, "The inverse of ``L L^T`` from its Cholesky factor ``A = L``.")):
    register(OpDef(name=f"linalg_{_name}", inputs=("A",), params=(), impl=_impl,
                   aliases=(f"_linalg_{_name}",), namespace="linalg", doc=_doc,
                   family="linalg"))


def _triangular(opname: str) -> Any:
    def impl(xp: Any, A: Any, B: Any, transpose: bool, rightside: bool, lower: bool,
             alpha: float) -> Any:
        return _tri_solve(xp, A, B, transpose, rightside, lower, alpha, opname)
    return impl


for _name, _doc in (("trmm", "``alpha * op(A) B`` (``B op(A)`` with ``rightside``), A "
                             "triangular."),
                    ("trsm", "``X`` solving ``op(A) X = alpha B`` (``X op(A)`` with "
                             "``rightside``).")):
    register(OpDef(name=f"linalg_{_name}", inputs=("A", "B"), params=_TRI,
                   impl=_triangular(f"linalg_{_name}"), aliases=(f"_linalg_{_name}",),
                   namespace="linalg", same_dtype=True, doc=_doc, family="linalg"))


def _sumlogdiag(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_sumlogdiag", True)
    return xp.sum(xp.log(xp.diagonal(A, axis1=-2, axis2=-1)), axis=-1)


register(OpDef(name="linalg_sumlogdiag", inputs=("A",), params=(), impl=_sumlogdiag,
               aliases=("_linalg_sumlogdiag",), namespace="linalg",
               doc="The sum of the logs of ``A``'s diagonal.", family="linalg"))


def _syrk(xp: Any, A: Any, transpose: bool, alpha: float) -> Any:
    _mat(A, "linalg_syrk")
    return alpha * (xp.matmul(_t(xp, A, True), A) if transpose else
                    xp.matmul(A, _t(xp, A, True)))


register(OpDef(name="linalg_syrk", inputs=("A",),
               params=(Param("transpose", "boolean", False), Param("alpha", "double", 1.0)),
               impl=_syrk, aliases=("_linalg_syrk",), namespace="linalg",
               doc="``alpha * A A^T`` (``A^T A`` with ``transpose``).", family="linalg"))


def _gelqf(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_gelqf")
    if A.shape[-2] > A.shape[-1]:
        raise MXNetValueError(f"linalg_gelqf: needs rows <= columns, got {tuple(A.shape)}")
    q, r = xp.linalg.qr(_t(xp, A, True))  # A^T = q r  ->  A = r^T q^T = L Q
    return [xp.ascontiguousarray(_t(xp, q, True)), xp.ascontiguousarray(_t(xp, r, True))]


register(OpDef(name="linalg_gelqf", inputs=("A",), params=(), impl=_gelqf,
               aliases=("_linalg_gelqf",), namespace="linalg",
               doc="The LQ factorization ``A = L Q`` (outputs Q, L; LAPACK's signs).",
               family="linalg"))


def _syevd(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_syevd", True)
    w, v = xp.linalg.eigh(A)
    u = _t(xp, v, True)
    # MXNet's sign convention: each eigenvector's largest-magnitude entry is positive
    big = xp.take_along_axis(u, xp.argmax(xp.abs(u), axis=-1)[..., None], axis=-1)
    u = u * xp.where(big < 0, -1.0, 1.0).astype(A.dtype)
    return [u, w]


register(OpDef(name="linalg_syevd", inputs=("A",), params=(), impl=_syevd,
               aliases=("_linalg_syevd",), namespace="linalg",
               doc="Eigenvectors (rows of U) and ascending eigenvalues of symmetric ``A``.",
               differences="eigenvector signs: the largest entry of each row of U is made "
                           "positive (LAPACK's choice may differ)", family="linalg"))


def _det(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_det", True)
    return xp.linalg.det(A)


def _slogdet(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_slogdet", True)
    sign, logabs = xp.linalg.slogdet(A)
    return [xp.asarray(sign).astype(A.dtype), xp.asarray(logabs).astype(A.dtype)]


def _inverse(xp: Any, A: Any) -> Any:
    _mat(A, "linalg_inverse", True)
    return xp.linalg.inv(A)


for _name, _fn, _doc in (("det", _det, "The determinant of ``A``."),
                         ("slogdet", _slogdet, "The sign and log |det| of ``A``."),
                         ("inverse", _inverse, "The inverse of ``A``.")):
    register(OpDef(name=f"linalg_{_name}", inputs=("A",), params=(), impl=_fn,
                   aliases=(f"_linalg_{_name}",), namespace="linalg", doc=_doc,
                   family="linalg"))


def _extractdiag(xp: Any, A: Any, offset: int) -> Any:
    _mat(A, "linalg_extractdiag")
    return xp.ascontiguousarray(xp.diagonal(A, offset, axis1=-2, axis2=-1))


def _makediag(xp: Any, A: Any, offset: int) -> Any:
    n = A.shape[-1] + abs(offset)
    res = xp.zeros(A.shape[:-1] + (n, n), dtype=A.dtype)
    i = xp.arange(A.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    res[..., r, c] = A
    return res


def _trian(n: int, offset: int, lower: bool) -> tuple:
    """(rows, cols) of the triangle in MXNet's order: the lower one row by row, the
    upper one column by column (the lower triangle of the transpose)."""
    if offset > 0:
        lower = False
    elif offset < 0:
        lower = True
    rows, cols = np.tril_indices(n, offset if lower else -offset)
    return (rows, cols) if lower else (cols, rows)


def _extracttrian(xp: Any, A: Any, offset: int, lower: bool) -> Any:
    _mat(A, "linalg_extracttrian", True)
    rows, cols = _trian(A.shape[-1], offset, lower)
    return xp.ascontiguousarray(A[..., rows, cols])


def _maketrian(xp: Any, A: Any, offset: int, lower: bool) -> Any:
    m = A.shape[-1]
    k = abs(offset)
    n = int(round((np.sqrt(8 * m + 1) - 1) / 2)) + k
    if (n - k) * (n - k + 1) // 2 != m:
        raise MXNetValueError(f"linalg_maketrian: {m} entries are no triangle")
    rows, cols = _trian(n, offset, lower)
    res = xp.zeros(A.shape[:-1] + (n, n), dtype=A.dtype)
    res[..., rows, cols] = A
    return res


_OFFSET = Param("offset", "int", 0)
register(OpDef(name="linalg_extractdiag", inputs=("A",), params=(_OFFSET,), impl=_extractdiag,
               aliases=("_linalg_extractdiag",), namespace="linalg",
               doc="The ``offset`` diagonal of ``A``.", family="linalg"))
register(OpDef(name="linalg_makediag", inputs=("A",), params=(_OFFSET,), impl=_makediag,
               aliases=("_linalg_makediag",), namespace="linalg",
               doc="Square matrices with ``A`` on the ``offset`` diagonal.", family="linalg"))
register(OpDef(name="linalg_extracttrian", inputs=("A",),
               params=(_OFFSET, Param("lower", "boolean", True)), impl=_extracttrian,
               aliases=("_linalg_extracttrian",), namespace="linalg",
               doc="The lower (upper) triangle of ``A`` as a vector, row by row.",
               family="linalg"))
register(OpDef(name="linalg_maketrian", inputs=("A",),
               params=(_OFFSET, Param("lower", "boolean", True)), impl=_maketrian,
               aliases=("_linalg_maketrian",), namespace="linalg",
               doc="Triangular matrices from the vectors ``A`` (as extracttrian gives).",
               family="linalg"))
