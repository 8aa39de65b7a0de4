"""SHA-256 of a file; the gateway passes the checked arguments as JSON on stdin."""
import hashlib
import json
import sys

args = json.load(sys.stdin)
digest = hashlib.sha256()
size = 0
with open(args["path"], "rb") as handle:
    for block in iter(lambda: handle.read(1 << 16), b""):
        digest.update(block)
        size += len(block)
print(json.dumps({"path": args["path"], "sha256": digest.hexdigest(), "bytes": size}))
