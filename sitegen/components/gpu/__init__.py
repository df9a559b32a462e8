"""The `gpu` project: the GPU pool's operator and the job queues."""

from sitegen.components.base import Project

PROJECT = Project("gpu", "the GPU pool: GPU Operator, Kueue and its queues")
