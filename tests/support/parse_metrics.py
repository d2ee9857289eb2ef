#!/usr/bin/python3
"""Parses a Prometheus text exposition (stdin) with the Prometheus project's
own Python parser (Debian's python3-prometheus-client) and prints it as JSON:
{"families": {NAME: TYPE}, "samples": [{"name", "labels", "value"}]}.
Exits non-zero, with the parser's message, when the text does not parse or a
family comes without a TYPE line (the parser then calls it "unknown")."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    families = {}
    samples = []
    try:
        for family in text_string_to_metric_families(text):
            if family.type == "unknown":
                print(f"family {family.name} has no TYPE line", file=sys.stderr)
                return 1
            families[family.name] = family.type
            for s in family.samples:
                samples.append({"name": s.name, "labels": s.labels, "value": s.value})
    except Exception as e:  # the parser raises ValueError and friends
        print(f"does not parse: {e}", file=sys.stderr)
        return 1
    json.dump({"families": families, "samples": samples}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
