# The tool version and git sha go into every run's provenance. The header is
# regenerated on every build (written only when it changes), so the sha never
# goes stale after a commit.
add_custom_target(timeroof_version_header ALL
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}
          -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/generated/timeroof/version.hpp
          -DVERSION=${PROJECT_VERSION}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/WriteVersion.cmake
  BYPRODUCTS ${CMAKE_CURRENT_BINARY_DIR}/generated/timeroof/version.hpp
  COMMENT "timeroof version header")
