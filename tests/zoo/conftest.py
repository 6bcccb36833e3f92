def pytest_terminal_summary(terminalreporter):
    from tests.zoo.test_zoo import IMPROVEMENTS
    if IMPROVEMENTS:
        terminalreporter.section("zoo models better than their baseline (tighten it: python -m tests.zoo "
                                 "--update-baseline)")
        for line in IMPROVEMENTS:
            terminalreporter.write_line(line)
