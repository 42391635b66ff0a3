"""Boot: TFTP staging, the boot strategies (U-Boot netboot, …), console logs."""
