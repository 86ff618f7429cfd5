"""Training: `trainer.Trainer` (algorithm-blind optimizer step over packed trees), checkpoints, LoRA,
value models, data parallel helpers; `loop` runs rollouts -> trees -> advantages -> steps.

Importing this package is light (no torch); its settings (`TrainerConfig`, `LossConfig`) live in
`harnessrl.config`."""
