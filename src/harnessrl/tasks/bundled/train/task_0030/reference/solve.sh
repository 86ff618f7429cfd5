#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import json
from datetime import datetime
inc = json.load(open("incidents.json"))
def t(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00"))
for i in inc:
    i["minutes"] = (t(i["resolved"]) - t(i["opened"])).total_seconds() / 60 if i["resolved"] else None
out = ["# Incident summary", "", "## By severity", "",
       "| Severity | Incidents | Open | Mean minutes to resolve |", "|---|---:|---:|---:|"]
for sev in ("sev1", "sev2", "sev3"):
    mine = [i for i in inc if i["severity"] == sev]
    done = [i["minutes"] for i in mine if i["minutes"] is not None]
    mean = f"{sum(done) / len(done):.1f}" if done else "-"
    out.append(f"| {sev} | {len(mine)} | {len(mine) - len(done)} | {mean} |")
top = max((i for i in inc if i["minutes"] is not None), key=lambda i: i["minutes"])
out += ["", "## Longest incident", "",
        f"{top['id']} on {top['service']} took {top['minutes']:.0f} minutes to resolve.", "",
        "## Open incidents", ""]
out += [f"- {i['id']} ({i['service']})" for i in sorted(inc, key=lambda i: i["id"]) if i["minutes"] is None]
open("incident_review.md", "w").write("\n".join(out) + "\n")
PY
