"""Counts lines, words and characters; the gateway passes the checked arguments as JSON on stdin."""
import json
import sys

args = json.load(sys.stdin)
with open(args["path"], encoding="utf-8", errors="replace") as handle:
    text = handle.read(8 * 1024 * 1024)
print(json.dumps({"path": args["path"], "lines": text.count("\n"), "words": len(text.split()), "chars": len(text)}))
