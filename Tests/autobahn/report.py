"""Reads an Autobahn|Testsuite fuzzing-client report (index.json) and says whether every
case passed: OK, NON-STRICT and INFORMATIONAL pass; FAILED, UNIMPLEMENTED (we offer
permessage-deflate, so 12.* and 13.* must run) and any other verdict fail, as does a
closing handshake judged other than OK or INFORMATIONAL.

Usage: python3 Tests/autobahn/report.py REPORT_DIR/index.json
Prints the NON-STRICT cases (CONTRIBUTING.md, "WebSocket conformance", gives each one's reason),
one line per failure, the count of each verdict, then "autobahn: N passed, M failed".
Exit 1 on a failure.
"""
import json
import sys
from collections import Counter

PASSING = {"OK", "NON-STRICT", "INFORMATIONAL"}
PASSING_CLOSE = {"OK", "INFORMATIONAL"}


def case_key(case_id):
    return [int(part) for part in case_id.split(".")]


def main():
    index_path = sys.argv[1]
    with open(index_path) as handle:
        index = json.load(handle)
    cases = {}
    for agent_cases in index.values():
        cases.update(agent_cases)
    if not cases:
        print("autobahn: FAILED: the report has no cases (%s)" % index_path)
        print("autobahn: 0 passed, 1 failed")
        return 1

    verdicts = Counter()
    failed = []
    non_strict = []
    for case_id in sorted(cases, key=case_key):
        result = cases[case_id]
        behavior, close = result.get("behavior"), result.get("behaviorClose")
        verdicts[behavior] += 1
        if behavior not in PASSING or close not in PASSING_CLOSE:
            failed.append((case_id, behavior, close, result.get("reportfile", "")))
        elif behavior == "NON-STRICT":
            non_strict.append(case_id)
    print("autobahn: NON-STRICT (reasons in CONTRIBUTING.md, WebSocket conformance): %s"
          % (" ".join(non_strict) if non_strict else "none"))
    for case_id, behavior, close, report in failed:
        print("autobahn: FAILED %s: behavior %s, close %s (%s)" % (case_id, behavior, close, report))
    sections = sorted({case_id.split(".")[0] for case_id in cases}, key=int)
    order = ["OK", "NON-STRICT", "INFORMATIONAL", "FAILED"]
    names = order + sorted(set(verdicts) - set(order))
    print("autobahn: %s (sections %s)" % (", ".join("%d %s" % (verdicts[name], name) for name in names
                                                      if verdicts[name] or name == "FAILED"),
                                          ", ".join(sections)))
    print("autobahn: %d passed, %d failed" % (len(cases) - len(failed), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
