"""Where the robot kept a content file's response head (core/common/response_head.h):
the file's extended attribute user.lcc.response-head, else the side file <file>.http
where the file system refused the attribute. For the end-to-end tests that look at a
content folder."""
import errno
import os

HEAD_ATTRIBUTE = "user.lcc.response-head"


def stored_head(path):
    """("attribute" or "side file", the stored bytes) of content file `path`; None when
    no head was kept."""
    try:
        return "attribute", os.getxattr(path, HEAD_ATTRIBUTE)
    except OSError as e:
        if e.errno not in (errno.ENODATA, errno.ENOTSUP):
            raise
    if os.path.exists(path + ".http"):
        with open(path + ".http", "rb") as f:
            return "side file", f.read()
    return None


def takes_attributes(folder):
    """Whether the file system holding `folder` keeps user attributes."""
    probe = os.path.join(folder, "xattr-probe")
    with open(probe, "wb"):
        pass
    try:
        os.setxattr(probe, "user.lcc.probe", b"x")
        return True
    except OSError as e:
        if e.errno != errno.ENOTSUP:
            raise
        return False
    finally:
        os.remove(probe)
