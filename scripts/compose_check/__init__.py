"""The compose check (`make compose-check`): see check.py."""
