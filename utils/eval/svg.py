"""Minimal SVG charts (line, bar, scatter) written as text: no plotting library."""

from xml.sax.saxutils import escape

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
           "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]
WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 40, 60


def _nice_max(value):
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


class Chart:
    def __init__(self, title, xlabel, ylabel, xmax, ymax, xmin=0.0, ymin=0.0):
        self.xmin, self.xmax = xmin, _nice_max(xmax) if xmax > xmin else xmin + 1
        self.ymin, self.ymax = ymin, _nice_max(ymax) if ymax > ymin else ymin + 1
        self.parts = [
            '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'font-family="sans-serif" font-size="12">' % (WIDTH, HEIGHT),
            '<rect width="100%" height="100%" fill="white"/>',
            '<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>' % (LEFT, escape(title)),
            '<text x="%d" y="%d" text-anchor="middle">%s</text>' % (
                (LEFT + WIDTH - RIGHT) / 2, HEIGHT - 15, escape(xlabel)),
            '<text transform="translate(18,%d) rotate(-90)" text-anchor="middle">%s</text>' % (
                (TOP + HEIGHT - BOTTOM) / 2, escape(ylabel))]
        self._axes()
        self.legend = 0

    def x(self, value):
        return LEFT + (value - self.xmin) / (self.xmax - self.xmin) * (WIDTH - LEFT - RIGHT)

    def y(self, value):
        return HEIGHT - BOTTOM - (value - self.ymin) / (self.ymax - self.ymin) * (HEIGHT - TOP - BOTTOM)

    def _axes(self):
        for i in range(6):
            fx = self.xmin + (self.xmax - self.xmin) * i / 5
            fy = self.ymin + (self.ymax - self.ymin) * i / 5
            self.parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (
                self.x(fx), TOP, self.x(fx), HEIGHT - BOTTOM))
            self.parts.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (
                LEFT, self.y(fy), WIDTH - RIGHT, self.y(fy)))
            self.parts.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (
                self.x(fx), HEIGHT - BOTTOM + 16, _fmt(fx)))
            self.parts.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (
                LEFT - 6, self.y(fy) + 4, _fmt(fy)))

    def add_legend(self, label, color):
        y = TOP + 10 + 18 * self.legend
        self.parts.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (
            WIDTH - RIGHT + 12, y - 10, color))
        self.parts.append('<text x="%d" y="%d">%s</text>' % (WIDTH - RIGHT + 30, y, escape(label)))
        self.legend += 1

    def step_line(self, points, color, label):
        if not points:
            return
        path = ["M%.1f,%.1f" % (self.x(points[0][0]), self.y(0))]
        previous_y = 0.0
        for px, py in points:
            path.append("L%.1f,%.1f L%.1f,%.1f" % (self.x(px), self.y(previous_y),
                                                   self.x(px), self.y(py)))
            previous_y = py
        path.append("L%.1f,%.1f" % (self.x(self.xmax), self.y(previous_y)))
        self.parts.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"/>' % (
            " ".join(path), color))
        self.add_legend(label, color)

    def bar(self, index, count, value, color, label):
        slot = (WIDTH - LEFT - RIGHT) / count
        x0 = LEFT + slot * index + slot * 0.15
        self.parts.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
            x0, self.y(value), slot * 0.7, self.y(0) - self.y(value), color))
        self.parts.append('<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>' % (
            x0 + slot * 0.35, self.y(value) - 4, _fmt(value)))
        self.add_legend(label, color)

    def point(self, px, py, color, label):
        self.parts.append('<circle cx="%.1f" cy="%.1f" r="6" fill="%s"/>' % (
            self.x(px), self.y(py), color))
        self.add_legend(label, color)

    def render(self):
        return "\n".join(self.parts + ["</svg>"]) + "\n"


def _fmt(value):
    return ("%.2f" % value).rstrip("0").rstrip(".") if value < 10 else "%.0f" % value
