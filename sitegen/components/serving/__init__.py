"""The `serving` project: the vLLM router and the model servers behind it."""

from sitegen.components.base import Project

PROJECT = Project("serving", "AI serving: the vLLM router and the model servers behind it")
