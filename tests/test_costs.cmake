# Read by ctest after the Catch tests are discovered (TEST_INCLUDE_FILES): the longest of them carry a COST so
# that `ctest -j` starts them first instead of leaving one to run alone at the end (with no cost data yet, as
# on a fresh checkout, ctest runs tests in their listed order).
set_tests_properties("every emitted CPU kernel of a shipped pair moves exactly the oracle's bytes" PROPERTIES COST 900)
