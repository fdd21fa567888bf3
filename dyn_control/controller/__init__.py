"""The controller without middleware: the core that composes a tick's stages, the laws, goals and
trajectories, the limits and the observer.
"""
