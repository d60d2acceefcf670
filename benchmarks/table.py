"""Plain-text tables for benchmark rows (list of dicts with possibly different keys)."""

from __future__ import annotations

import sys


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if v >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def print_rows(rows: list[dict], title: str | None = None) -> None:
    if title:
        print(f"\n## {title}\n")
    if not rows:
        print("(no rows)")
        return
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    cells = [[_fmt(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |")


def run_and_print(run, title: str | None = None) -> None:
    """What a benchmark module's main() does: run (`--quick` on the command line selects the
    smaller sizes) and print the rows as one table. `-h`/`--help` prints the benchmark
    module's docstring (its command, flags and what each row measures) instead of running."""
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        print((sys.modules[run.__module__].__doc__ or "").strip())
        return
    print_rows(run(quick="--quick" in sys.argv), title)
