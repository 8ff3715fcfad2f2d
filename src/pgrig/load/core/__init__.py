"""A measured run: the orchestrators (runner.py; multi_runner.py with load hosts), the steps both
take, the run's hold on its environment, its life cycle and its files."""
