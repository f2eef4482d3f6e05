# Compile and link options as interface targets, attached per target (never global):
#   vigil_warnings    -Wall -Wextra (and -Werror with VIGIL_WERROR) for vigil's own code
#   vigil_sanitizers  ASan+UBSan (VIGIL_SANITIZE) or TSan (VIGIL_TSAN), compile and link
add_library(vigil_warnings INTERFACE)
target_compile_options(vigil_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<BOOL:${VIGIL_WERROR}>:-Werror>)

add_library(vigil_sanitizers INTERFACE)
if(VIGIL_SANITIZE AND VIGIL_TSAN)
  message(FATAL_ERROR "VIGIL_SANITIZE and VIGIL_TSAN cannot be combined")
endif()
set(VIGIL_SANITIZER_LINK_FLAGS "")   # also used directly on the library (not exported)
if(VIGIL_SANITIZE)
  target_compile_options(vigil_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  set(VIGIL_SANITIZER_LINK_FLAGS -fsanitize=address,undefined)
endif()
if(VIGIL_TSAN)
  target_compile_options(vigil_sanitizers INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  set(VIGIL_SANITIZER_LINK_FLAGS -fsanitize=thread)
endif()
if(VIGIL_SANITIZER_LINK_FLAGS)
  target_link_options(vigil_sanitizers INTERFACE ${VIGIL_SANITIZER_LINK_FLAGS})
endif()
