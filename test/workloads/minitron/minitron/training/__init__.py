"""Initialisation, pipeline schedules, the train step and the training loop."""
