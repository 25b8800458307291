#!/bin/sh
# Every test translation unit includes test_common.h first, so torch (and its glog) come before
# Catch2 and Catch2's CHECK wins over glog's (the catch2_canary_check_fails test proves what goes
# wrong otherwise). Checked for every .cpp of the test binary, and no other file of it includes
# Catch2 itself (a header cannot know it is included first). race/ is a binary of its own without
# LibTorch. Exits 1 naming each offender.
root="${1:-$(dirname "$0")/..}"
cd "$root/tests" || exit 2
status=0
for f in main.cpp $(find analysis app core gpu -name '*.cpp' | sort); do
  first=$(grep -m1 '^#include' "$f")
  if [ "$first" != '#include "test_common.h"' ]; then
    echo "$f: the first include is '$first', not \"test_common.h\""
    status=1
  fi
done
others=$(grep -rln 'catch2/catch.hpp' --include='*.h' --include='*.cpp' . | grep -v -e '^./test_common.h$' -e '^./race/')
if [ -n "$others" ]; then
  echo "these include Catch2 themselves instead of through test_common.h:"
  echo "$others"
  status=1
fi
[ $status -eq 0 ] && echo "include order ok"
exit $status
