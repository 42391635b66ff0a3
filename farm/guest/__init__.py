"""A Linux guest under QEMU/KVM on a booted target: its setup (spec), its QEMU command line (command)
and starting, using and stopping it on the target's serial console (start). See docs/guest.md."""
