"""What the launch files share: paths in the package's share folder, and a URDF or xacro turned
into the robot_description text every node takes. No launch import here, so the files stay
plain launch descriptions and this stays importable (and testable) without launch."""

import os

PACKAGE = "dyn_control"


def share(*parts):
    """A path in the installed package's share folder (config/, urdf/, launch/)."""
    from ament_index_python.packages import get_package_share_directory
    return os.path.join(get_package_share_directory(PACKAGE), *parts)


def robot_description(path, **mappings):
    """A URDF or xacro file -> URDF text (xacro passes a plain URDF through)."""
    import xacro
    return xacro.process_file(path, mappings=mappings).toxml()


def is_true(text):
    """A launch argument given as text -> bool."""
    return text.lower() == "true"
