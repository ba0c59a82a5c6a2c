"""Runs Autobahn|Testsuite's wstest from a `pip install --target` directory.

Usage: python2.7 Tests/autobahn/wstest.py SITE_DIR [wstest arguments]

A --target install is not a site directory: its .pth files (zope's namespace package)
are only read when the directory is added with site.addsitedir, which PYTHONPATH does
not do.
"""
import site
import sys

site.addsitedir(sys.argv.pop(1))

from autobahntestsuite.wstest import run  # noqa: E402

sys.argv[0] = "wstest"
run()
