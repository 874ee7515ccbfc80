"""One summary line of a GPU suite's case: `NAME: PREFIX; <the tune's outcome>`, read from
LOG.spec_check.txt, LOG.tune.json and LOG.tune.err. Exits 1 unless a winner was found and
verified, so that the suite's status says so.
    python3 tests/gpu/tune_line.py NAME LOG [PREFIX]"""
import json
import sys

name, log = sys.argv[1:3]
prefix = "".join(f"{part}; " for part in sys.argv[3:] if part)
spec = open(log + ".spec_check.txt").read().strip().splitlines()[-1]
try:
    tune = json.load(open(log + ".tune.json"))
except (OSError, ValueError):
    print(f"{name}: {prefix}{spec}; tune did not finish: {open(log + '.tune.err').read().strip()[-400:]}")
    sys.exit(1)
best, verification = tune["best"], tune["verification"]
failed = [c for c in verification["cases"] if c["status"] == "fail"] if verification else None
verified = "no verification" if verification is None else (f"{len(verification['cases'])} cases pass" if not failed else f"verification failed: {failed[0]['label']}")
sol = f"{best['sol_percent']:.0f}% SOL" if best and best.get("sol_percent") else "-"
if best:
    print(f"{name}: {prefix}{spec}; baseline {tune['baseline_us']:.2f} µs over {len(tune['baseline'])} problems, "
          f"best {best['time_us']:.2f} µs ({best['speedup']:.2f}×, {sol}) {dict(best['config'])}; {verified}; {len(tune['rows'])} evaluated, failures {tune['failures']}")
else:
    print(f"{name}: {prefix}{spec}; no correct configuration; failures {tune['failures']}")
sys.exit(0 if best and verification and not failed else 1)
