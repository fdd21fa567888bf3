"""The simulated arm without middleware: the forward-dynamics step and the core that the simulator
node drives.
"""
