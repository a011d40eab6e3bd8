"""``Report``: the result of :func:`lockstep.check`, the CLI's report.json and its text."""

import json


def _short(hexdigest):
    return hexdigest[:16] if hexdigest else "-"


def _compact(value):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _cell(tally):
    return "-" if not tally["total"] else f"{tally['passed']}/{tally['total']}"


class Report:
    """The report of one :func:`lockstep.check` run.

    ``passed``: conformity held and every check that ran passed, with no environment error.
    ``skipped``: checks that could not run here, by name, with the reason (never counted as
    passed). ``failures``: one readable explanation per failing (env, seed), as the CLI prints
    it. ``to_json()`` / ``write(dir)``: the CLI's report.json (and report.html).
    """

    def __init__(self, native, skipped):
        self._native = native
        self.skipped = dict(skipped)
        self.data = native.to_dict()

    @property
    def passed(self) -> bool:
        return self._native.passed

    @property
    def trials(self):
        """The trials of report.json: one dict per (env, seed)."""
        return self.data["trials"]

    @property
    def failures(self):
        """One text per failing trial: the reset-contract diff, each failing check with its
        first divergence (step, agent, key, element, both values), or the error."""
        out = []
        for t in self.data["trials"]:
            audit = t.get("audit")
            failing = [c for c in t["checks"] if not c["passed"]]
            if t.get("error") is None and audit is not None and audit["conforms"] and not failing:
                continue
            lines = [f"FAIL {t['env']} seed {t['seed']}"]
            if t.get("error"):
                lines.append(f"  error: {t['error']}")
            if audit is not None and not audit["conforms"]:
                lines.append(
                    "  reset contract: starting fingerprint "
                    f"{_short(audit.get('initial_fingerprint'))} -> {_short(audit.get('repeat_fingerprint'))}"
                )
                if audit["different_fields"]:
                    lines.append("  different fields: " + ", ".join(audit["different_fields"]))
                lines += [f"  missing field {p}" for p in audit["missing"]]
                lines += [f"  unexpected field {p}" for p in audit["unexpected"]]
                for c in audit["changes"]:
                    lines.append(
                        f"    {c.get('kind', 'changed')} {c.get('pointer', '')}: "
                        f"{_compact(c.get('before'))} -> {_compact(c.get('after'))}"
                    )
            for c in failing:
                lines.append(f"  {c['check']} check: {c['summary']}")
                if c.get("divergence") is not None:
                    lines.append(f"    {_compact(c['divergence'])}")
            out.append("\n".join(lines))
        return out

    def summary(self):
        """The CLI's table, then every failure, skipped checks and the verdict."""
        checks = list(self.data["params"]["checks"])
        rows = [["env", "seeds", "conformity", "success"] + checks]
        for s in self.data["summary"]:
            rows.append(
                [s["env"], str(s["seeds"]), _cell(s["conformity"]), _cell(s["success"])]
                + [_cell(s["checks"][c]) if c in s["checks"] else "-" for c in checks]
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        for f in self.failures:
            lines += ["", f]
        for name, why in self.skipped.items():
            lines += ["", f"SKIPPED {name} check: {why}"]
        errors = sum(s["errors"] for s in self.data["summary"])
        if errors:
            verdict = f"{errors} trial(s) hit an environment error: their results are incomplete"
        elif self.passed:
            verdict = "all checks pass" + (" (some skipped)" if self.skipped else "")
        else:
            verdict = "some checks fail"
        return "\n".join(lines + ["", verdict])

    def __str__(self):
        return self.summary()

    def __bool__(self):
        return self.passed

    def __repr__(self):
        return f"<lockstep.Report passed={self.passed} trials={len(self.trials)} skipped={sorted(self.skipped)}>"

    def to_json(self) -> str:
        """The bytes of the CLI's report.json (format lockstep-report/3, docs/report.md)."""
        return self._native.to_json()

    def write(self, dir) -> None:
        """Writes report.json and report.html into ``dir`` (created if needed)."""
        self._native.write(str(dir))
