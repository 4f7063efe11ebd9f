// The sandbox ("pause") program of the real-node suite's images (scripts/ensure-images.sh).
module eso-mtls/testing/images/pause

go 1.26.0
