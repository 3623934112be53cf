"""Training, fine-tuning on a person's drawings, rehearsal sets, distillation, the unsure detector's fit."""
