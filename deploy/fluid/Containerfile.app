# Containerfile.app - a tiny "application" image for trying the Fluid mount and for the fio
# check: a static busybox and fio with its libraries, FROM scratch. Built by
# deploy/fluid/build-image (localhost/nacre-app:<hash> and :latest).
FROM scratch
COPY rootfs/ /
CMD ["/bin/sh"]
