#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import json, re
from collections import Counter
pat = re.compile(r'(\S+) \S+ \S+ \[[^\]]+\] "\S+ (\S+) [^"]*" (\d{3}) (\d+|-)')
ips, status, paths, size, n = set(), Counter(), Counter(), 0, 0
for line in open("logs/access.log"):
    m = pat.match(line)
    if not m:
        continue
    ip, path, code, nbytes = m.groups()
    n += 1
    ips.add(ip)
    status[code] += 1
    paths[path.split("?")[0]] += 1
    size += int(nbytes) if nbytes != "-" else 0
top, hits = paths.most_common(1)[0]
errors = sum(v for k, v in status.items() if k.startswith("5"))
out = {"total_requests": n, "unique_ips": len(ips), "status_counts": dict(status), "top_path": top,
       "top_path_hits": hits, "bytes_sent": size, "server_error_rate": round(errors / n, 3)}
json.dump(out, open("stats.json", "w"), indent=2)
PY
