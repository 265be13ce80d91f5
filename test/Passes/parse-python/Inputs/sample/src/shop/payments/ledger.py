ENTRIES = []


def record(amount):
    ENTRIES.append(amount)
