"""Write the CPU ladder of issue 22 as a study file: nano, micro and tiny (0.1M, 0.3M and 0.8M
non-embedding parameters) x 4, 8 and 16 tokens per parameter x MLM-40, CLM and CLM 25% -> MLM-40 x
pretraining seeds 0 and 1, on general-en with a 4,096-token BPE (the largest run reads 12.6M of its
~15M unique tokens, so no text is repeated). tiny is the held-out target:

    python scripts/cpu_ladder.py > ladder-cpu.yaml
    encoderlab study run ladder-cpu.yaml --out runs/ladder-cpu --jobs 2
    encoderlab advise runs/ladder-cpu --hold-out-largest --out runs/ladder-cpu-holdout

About 4.9e14 FLOPs at 6ND with branching (7.4e14 without), an estimated 5 core-hours on this machine's
CPU (about 2.5-3 h at --jobs 2); docs/advise.md, "The CPU ladder".
"""

from encoderlab.advise.ladder import Schedule
from encoderlab.advise.study import LadderDesign, ladder_study
from encoderlab.study.files import dump_study

DESIGN = LadderDesign(
    sizes=("nano", "micro", "tiny"),
    budgets=(4.0, 8.0, 16.0),
    schedules=(Schedule.biphasic(0.0, 0.4), Schedule.biphasic(1.0, None), Schedule.biphasic(0.25, 0.4)),
    seeds=(0, 1),
    vocab_size=4096,
    seq_len=256,
    micro_batch=16,
    run_overrides={"precision": "fp32", "validation.every": 250},
)

if __name__ == "__main__":
    print(dump_study(ladder_study(DESIGN, name="ladder-cpu"), "scripts/cpu_ladder.py"), end="")
