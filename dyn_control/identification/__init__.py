"""Identification of an arm's inertial and friction parameters: the regressor and its fits, the
excitation, the recorded signals, and the offline run that writes the identified URDF.
"""
