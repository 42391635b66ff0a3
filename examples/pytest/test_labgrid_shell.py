"""Plain labgrid: the `target` and `strategy` fixtures of labgrid's own pytest plugin.

    pytest --lg-env=../../env/qemu-maaxboard.yaml .

With no image staged, farm's strategy boots the env file's `images: farm-image` (built on demand).
"""


def test_shell_answers(target, strategy):
    strategy.transition("shell")
    shell = target.get_driver("ShellDriver")
    assert shell.run_check("echo hello from $(uname -m)")[0].startswith("hello from ")


def test_kernel_is_linux(target, strategy):
    strategy.transition("shell")
    assert target.get_driver("ShellDriver").run_check("uname -s") == ["Linux"]
