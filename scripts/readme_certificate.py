#!/usr/bin/env python3
"""Writes the README's results section (headline, grade table, group rows, counts, controls) from the certificate.

usage: scripts/readme_certificate.py [--check] [--certificate FILE] [--readme FILE]

The section lies between the markers <!-- certificate:begin --> and <!-- certificate:end -->.
--check: exit 1 (and say why) if the README's section is not what the certificate gives.
"""
import argparse
import json
import sys

BEGIN = "<!-- certificate:begin -->"
END = "<!-- certificate:end -->"
LETTER = {"EXACT_BYTE": "B", "EXACT_TOKEN": "T", "SUBSET": "S", "NOT_EXACT": "N", "REFUSED": "R", "UNKNOWN": "U"}
ORDER = ["EXACT_BYTE", "EXACT_TOKEN", "SUBSET", "NOT_EXACT", "REFUSED", "UNKNOWN"]


def cell(row):
    """The grade's letter; lower case when the row was not cross-checked; ! on a disagreement or error."""
    check = row["cross_check"]
    if row.get("error") or (check["checked"] and not check["agree"]):
        return "!"
    return LETTER[row["grade"]] if check["checked"] else LETTER[row["grade"]].lower()


def cross_check_sentence(cert):
    """Where the rows were cross-checked: each shape used and its row count, derived shapes named as such."""
    base = cert["caches"]["cross_check"]
    derived = cert["caches"]["cross_check_derived"]
    on = cert["counts"]["cross_checked_on"]
    shapes = [f"`{name}` ({k} rows" + (f", derived from `{base}` for pairs with a layout that does not fit it"
                                       if name in derived else "") + ")"
              for name, k in on.items()]
    return (f"cross-check on {', '.join(shapes) if shapes else 'no shape'}, "
            f"{cert['counts']['not_cross_checked']} rows not cross-checked.")


def group_side(name, params):
    """`vllm-flash-nhd-tp` (tp_size=2), or the plain name for a whole layout."""
    if not params:
        return f"`{name}`"
    return f"`{name}` (" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def group_rows_table(cert):
    """The group rows (rank families moved between group sizes), one table line each; [] when there are none."""
    rows = cert.get("group_rows") or []
    if not rows:
        return []
    counts = cert["counts"].get("group_rows", {})
    out = [f"Group rows ({len(rows)}; rank families moved between group sizes, proven on the model named, each "
           "cross-checked by enumerating both groups on a small shape against the group proof there; "
           f"{counts.get('disagree', 0)} DISAGREE, {counts.get('not_cross_checked', 0)} not cross-checked):", "",
           "| source | target | model | grade | rank pairs | cross-check |", "|---|---|---|---|---|---|"]
    for r in rows:
        check = r["cross_check"]
        if r.get("error"):
            checked = "internal error: " + r["error"]
        elif not check["checked"]:
            checked = "not cross-checked: " + (check["not_cross_checked"] or "")
        else:
            checked = f"`{check['cache']}`: {check['grade']}" + (", agrees" if check["agree"] else ", DISAGREES")
        out.append(f"| {group_side(r['source'], r['source_params'])} | {group_side(r['target'], r['target_params'])} | "
                   f"`{r['cache']}` | {r['grade']} (`{r['reason']}`) | {len(r['assignment'])} | {checked} |")
    out.append("")
    return out


# Upgrading an engine is itself a translation: an older declaration of an engine and the declaration of the
# release people run now, in both directions (rows of the certificate; a pair missing from it is an error).
UPGRADES = [
    ("vllm-flash-nhd", "vllm033-lbnhc"), ("vllm-flash-hnd", "vllm033-lbhnc"), ("vllm-flash-nhd", "vllm033-blnhc"),
    ("vllm-packed-nhd", "vllm033-lbnhc"), ("vllm-mla", "vllm033-mla-lbnhc"), ("sglang-mha", "sglang0523-mha"),
    ("sglang-mla", "sglang0523-mla"), ("sglang-host-page-first", "sglang0523-host-page-first"),
    ("lmcache-2ltd", "lmcache056-2ltd"), ("lmcache-mla", "lmcache056-mla"), ("hf-dynamic", "hf520-dynamic"),
    ("flashinfer-nhd", "flashinfer072-nhd"),
]


def upgrades_table(cert):
    grade = {(r["source"], r["target"]): r for r in cert["rows"]}
    pairs = [(a, b) for a, b in UPGRADES if (a, b) in grade and (b, a) in grade]
    if not pairs:
        return []
    out = ["Upgrading an engine, as a proven translation (the older declaration of an engine against the release "
           "people run now; the full grid above has every such row):", "",
           "| older declaration | current release | old → new | new → old |", "|---|---|---|---|"]
    for a, b in pairs:
        fwd, back = grade[(a, b)], grade[(b, a)]
        out.append(f"| {a} | {b} | {fwd['grade']} (`{fwd['reason']}`) | {back['grade']} (`{back['reason']}`) |")
    out.append("")
    return out


def evidence_table(cert):
    """Observed layouts: the release whose own code ran (conformance/run.sh) and what agreed."""
    evidence = cert.get("evidence", {})
    observed = [(name, e) for name, e in evidence.items() if e.get("evidence") == "observed"]
    if not observed:
        return []
    counts = cert["counts"].get("evidence", {})
    out = [f"Observed layouts ({len(observed)} of {len(observed) + counts.get('declared_layouts', 0)} engine layouts; "
           f"{counts.get('rows_between_observed', 0)} rows are between two observed layouts): "
           "`conformance/run.sh` installs the pinned release, runs its own allocation code on a small cache and "
           "checks the tensors' geometry (`kvlayout check --tensors`) and, where marked, reads a pattern written "
           "through the engine's own write path back through the declaration at every position. The others are "
           "declared from their cited source only.", "",
           "| layout | release whose code ran | checks | test |", "|---|---|---|---|"]
    for name, e in sorted(observed):
        out.append(f"| {name} | `{e['package']}` | {' + '.join(e['checks'])} | `{e['test']}` |")
    out.append("")
    return out


def render(cert):
    rows = cert["rows"]
    layouts = []
    for r in rows:
        if r["source"] not in layouts:
            layouts.append(r["source"])
    grade = {(r["source"], r["target"]): r for r in rows}
    width = max(len(n) for n in layouts)
    out = [BEGIN, "<!-- generated by scripts/readme_certificate.py from proofs/certificate.json; do not edit -->", ""]
    out.append("**" + cert["headline"] + "**")
    out.append("")
    proofs = cert["caches"]["proofs"]
    where = ", ".join(f"{k}: `{v}`" for k, v in proofs.items())
    out.append(f"Proofs on {where}; {cross_check_sentence(cert)} "
               "Row = source layout, column = target layout (numbered as the rows). "
               "B EXACT_BYTE, T EXACT_TOKEN, S SUBSET, N NOT_EXACT, R REFUSED, U UNKNOWN; lower case: proven but "
               "not cross-checked; ! disagreement or internal error. A layout marked `*` is observed: the conformance "
               "suite ran its engine's own code and the declaration agreed (the table after the grid).")
    out.append("")
    out.append("```")
    n = len(layouts)
    for digit in (0, 1):
        line = " " * (width + 6)
        for t in range(n):
            k = t + 1
            line += (str(k // 10) if k >= 10 else " ") if digit == 0 else str(k % 10)
            line += " "
        out.append(line.rstrip())
    evidence = cert.get("evidence", {})
    for s, src in enumerate(layouts):
        cells = []
        for tgt in layouts:
            cells.append(cell(grade[(src, tgt)]))
        mark = "*" if evidence.get(src, {}).get("evidence") == "observed" else " "
        out.append(f"{s + 1:3d}{mark}{src.ljust(width)}  " + " ".join(cells))
    out.append("```")
    out.append("")
    out.extend(evidence_table(cert))
    out.extend(upgrades_table(cert))
    unchecked = [r for r in rows if not r["cross_check"]["checked"] and not r.get("error")]
    if unchecked:
        out.append(f"Not cross-checked ({len(unchecked)} rows; proven, but no enumeration compared them):")
        out.append("")
        for r in unchecked:
            out.append(f"- {r['source']} -> {r['target']}: {r['cross_check']['not_cross_checked']}")
        out.append("")
    out.extend(group_rows_table(cert))
    counts = cert["counts"]
    classes = counts["distinct_classes"]
    out.append(f"| grade | declared rows ({counts['rows']}) | rows between distinct layouts ({classes['rows']}) |")
    out.append("|---|---|---|")
    for g in ORDER:
        out.append(f"| {g} | {counts['grades'][g]} | {classes['grades'][g]} |")
    out.append("")
    out.append("| reason | rows |")
    out.append("|---|---|")
    for reason, k in sorted(counts["reasons"].items()):
        out.append(f"| `{reason}` | {k} |")
    out.append("")
    merged = [c for c in cert["equivalence_classes"] if len(c) > 1]
    if merged:
        out.append("Proven duplicates (one address function on every shape used): " +
                   "; ".join(" = ".join(c) for c in merged) + ".")
        out.append("")
    ctl = cert["controls"]
    mut = ctl["mutation"]
    verdicts = ", ".join(f"{v} {k}" for k, v in sorted(mut["verdicts"].items()))
    ownership = {k: v for k, v in mut.get("by_kind", {}).items() if k in ("modulo-owner", "owner-off-by-one")}
    ownership_text = ""
    if ownership:
        parts = [f"{sum(v.values())} {k} ({', '.join(f'{n} {verdict}' for verdict, n in sorted(v.items()))})"
                 for k, v in sorted(ownership.items())]
        ownership_text = ("; ownership mutants of the rank families, judged by group moves: " + ", ".join(parts))
    out.append(f"Controls ({'all failed as they must' if ctl['ok'] else 'NOT ALL FAILED AS THEY MUST'}): "
               f"mutation score {ctl['mutation_score']:.3f} over {len(mut['mutants'])} mutants of the engine "
               f"declarations ({verdicts}; {mut['killed_by_grade']} killed by a non-exact grade, the rest valid layouts of "
               f"their own told apart by a refuted address-function proof{ownership_text}); broken declarations refused "
               "as expected: " +
               ", ".join(f"{b['layout']} ({b['expected_reason']})" for b in ctl["broken"] if b["ok"]) +
               "; with each obligation switched off its known-bad pair passes: " +
               ", ".join(f"{s['obligation']} ({s['source']} -> {s['target']}: {s['grade_with_obligation']} -> "
                         f"{s['grade_without_obligation']})"
                         for s in ctl["self_checks"] if s["ok"]) + ".")
    out.append("")
    out.append(ctl["fictional"]["statement"])
    out.append(END)
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--certificate", default="proofs/certificate.json")
    p.add_argument("--readme", default="README.md")
    a = p.parse_args()
    with open(a.certificate) as f:
        cert = json.load(f)
    with open(a.readme) as f:
        readme = f.read()
    if BEGIN not in readme or END not in readme:
        print(f"{a.readme}: no {BEGIN} ... {END} section", file=sys.stderr)
        return 2
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    updated = head + render(cert) + tail
    if a.check:
        if updated != readme:
            print(f"{a.readme}: the results section is stale; run scripts/readme_certificate.py", file=sys.stderr)
            return 1
        print(f"{a.readme}: the results section matches {a.certificate}")
        return 0
    with open(a.readme, "w") as f:
        f.write(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
