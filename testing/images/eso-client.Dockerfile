# ESO core's side of the connection, as a pod: the Go reloading client of testing/go-interop
# (cmd/reloading-client; its README says what it does), which scripts/ensure-images.sh builds on
# the host as a static binary (CGO_ENABLED=0), so the image is that binary alone. It is a test
# tool, not something we ship: it lives under testing/, and `npm run images` neither builds nor
# pushes it. uid 65532 as our other images; it reads only the mounted client Secret.
FROM scratch
COPY reloading-client /reloading-client
USER 65532:65532
ENTRYPOINT ["/reloading-client"]
