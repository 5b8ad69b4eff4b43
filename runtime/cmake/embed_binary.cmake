# cmake -DINPUT=FILE -DOUTPUT=FILE.cpp -DSYMBOL=name -P embed_binary.cmake
# Writes FILE's bytes as `extern "C" const unsigned char SYMBOL[]` and its
# size as `SYMBOL_size`, for the runtime to hand to the CUDA driver.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
math(EXPR bytes "${length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by embed_binary.cmake.\n#include <cstddef>\n"
  "extern \"C\" const unsigned char ${SYMBOL}[] = {${body}};\n"
  "extern \"C\" const size_t ${SYMBOL}_size = ${bytes};\n")
