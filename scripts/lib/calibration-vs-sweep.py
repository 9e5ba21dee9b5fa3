"""Print a sweep's trials and a calibration's predicted breaking point
against the sweep's measured one (scripts/calibrate-vs-sweep*.sh).

    python3 calibration-vs-sweep.py CALIBRATION.json SWEEP.json
"""
import json, sys
c = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
for t in s["trials"]:
    print(f"  offered {t['offered_rate']:>8.0f}  achieved {t['achieved_rate']:>8.0f}  "
          f"p99 {t['latency']['p99_ms']:>9.3f} ms  {'met' if t.get('meets_slo') else 'FAILED'}")
pred = c["prediction"]["breaking_point"]
cap = c["prediction"]["capacity"]
meas = s["breaking_point"]
print()
print(f"Predicted capacity:       {cap:,.0f} req/s ({len(c['steps'])} calibration steps, "
      f"converged: {c['converged']})")
print(f"Predicted breaking point: {pred:,.0f} req/s" if pred else "Predicted breaking point: none")
print(f"Measured breaking point:  {meas:,.0f} req/s" if meas else "Measured breaking point: none")
if pred and meas:
    print(f"Gap: {100 * (pred - meas) / meas:+.1f}% of the measured figure")
