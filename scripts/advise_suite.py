"""Print the known-answer suite's measured figures (docs/advise.md, "Measured on known-answer ladders").

The draws tests/advise/test_synthetic_suite.py asserts the issue's rates on (`encoderlab.advise.suite`; the test
scores the first 100 of the 200 and every tie), with the target one size step past the largest rung (the test's)
or more:

    python scripts/advise_suite.py 1 2

About a minute per target on one core.
"""

import sys

from encoderlab.advise.suite import draws, figures, ties

if __name__ == "__main__":
    for steps in map(float, sys.argv[1:] or ["1"]):
        print(f"target {steps:g} size step(s) past the largest rung:")
        for name, value in figures(draws(steps), ties(steps)).items():
            print(f"  {name}: {value}", flush=True)
