# install_system.cmake - the install step's system files, decided with the prefix known at
# install time (`cmake --install --prefix P`, cpack): the systemd units, their ExecStart=
# pointing at P's sbin, and mount.nacre and mount.fuse.nacre where mount(8) looks for
# helpers (/sbin).
# Set by the caller: NACRE_SBINDIR, NACRE_BINDIR, NACRE_COMPLETIONDIR, NACRE_INSTALL_LFS, NACRE_UNITS, NACRE_MOUNT_HELPER_DIR,
# NACRE_SYSTEMD_UNIT_DIR (empty = the defaults below), NACRE_STAGE (a scratch directory).

if(NACRE_SYSTEMD_UNIT_DIR)
  set(unit_dir "${NACRE_SYSTEMD_UNIT_DIR}")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(unit_dir "/lib/systemd/system")
else()
  set(unit_dir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
# util-linux's mount runs /sbin/mount.TYPE (also /sbin/fs.d, /sbin/fs): nowhere else.
if(NACRE_MOUNT_HELPER_DIR)
  set(helper_dir "${NACRE_MOUNT_HELPER_DIR}")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/usr/local")
  set(helper_dir "/sbin")
else()
  set(helper_dir "${NACRE_SBINDIR}")
  message(STATUS "mount.nacre goes to ${helper_dir}: mount -t nacre needs a link in /sbin")
endif()

file(MAKE_DIRECTORY "${NACRE_STAGE}")
set(staged "")
foreach(unit IN LISTS NACRE_UNITS)
  get_filename_component(name "${unit}" NAME)
  file(READ "${unit}" text)
  string(REPLACE "ExecStart=/usr/sbin/" "ExecStart=${NACRE_SBINDIR}/" text "${text}")
  file(WRITE "${NACRE_STAGE}/${name}" "${text}")
  list(APPEND staged "${NACRE_STAGE}/${name}")
endforeach()
file(INSTALL DESTINATION "${unit_dir}" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE
     GROUP_READ WORLD_READ FILES ${staged})

# An absolute link: /sbin and /usr/sbin are different top directories on a split-/usr host.
# mount.nacre for `mount -t nacre`; mount.fuse.nacre for what mount(8) does to a mount it
# finds of type fuse.nacre (mount -o remount): without it mount.fuse would run `nacre`.
file(MAKE_DIRECTORY "$ENV{DESTDIR}${helper_dir}")
if(helper_dir STREQUAL NACRE_SBINDIR)
  set(target "nacre-mount")
else()
  set(target "${NACRE_SBINDIR}/nacre-mount")
endif()
foreach(helper mount.nacre mount.fuse.nacre)
  set(link "$ENV{DESTDIR}${helper_dir}/${helper}")
  message(STATUS "Installing: ${link} -> ${target}")
  file(REMOVE "${link}")
  file(CREATE_LINK "${target}" "${link}" SYMBOLIC)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${helper_dir}/${helper}")
endforeach()

# lfs: the same program under Lustre's name, and its completion.
if(NACRE_INSTALL_LFS)
  foreach(link "${NACRE_BINDIR}/lfs" "${NACRE_COMPLETIONDIR}/lfs")
    message(STATUS "Installing: $ENV{DESTDIR}${link} -> nacre")
    file(REMOVE "$ENV{DESTDIR}${link}")
    file(CREATE_LINK nacre "$ENV{DESTDIR}${link}" SYMBOLIC)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${link}")
  endforeach()
endif()
