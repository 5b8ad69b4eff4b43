# -*- Python -*-
# Every gtest case of the unit-test binaries is one lit test.
import lit.formats

config.name = "DSF-Unit"
config.suffixes = []
config.test_source_root = config.dsf_unit_dir
config.test_exec_root = config.dsf_unit_dir
config.test_format = lit.formats.GoogleTest(".", "Tests")
