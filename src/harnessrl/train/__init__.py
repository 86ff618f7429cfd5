"""Training: `trainer.Trainer` (algorithm-blind optimizer step over packed trees), checkpoints, LoRA,
value models, data parallel helpers; `loop` runs rollouts -> trees -> advantages -> steps.

Importing this package is light (no torch); its settings (`TrainConfig`, `TrainerConfig`, `SftConfig`
and the `TrainSections` bundle that `loop.train` and `sft.sft` take) live in `train/config.py`."""
