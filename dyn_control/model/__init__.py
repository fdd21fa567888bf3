"""The model of an arm: its URDF read, its tree and joints chosen, its bodies lumped, and the packed
layout the compiled kernels read.
"""
