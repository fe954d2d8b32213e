/*
 * Parse a Nextflow DSL2 script with the Groovy compiler (Nextflow scripts are Groovy syntax)
 * and print its process and workflow structure as JSON, for tests/integration/test_nextflow.py.
 *
 *   groovy tests/nextflow/nf_structure.groovy main.nf
 *
 * A syntax error makes the compiler fail here, as it would make Nextflow fail.
 */
import org.codehaus.groovy.ast.*
import org.codehaus.groovy.ast.expr.*
import org.codehaus.groovy.ast.stmt.*
import org.codehaus.groovy.control.*
import groovy.json.JsonOutput

def src = new File(args[0]).text.replaceFirst(/^#!.*\n/, '\n')
def unit = new CompilationUnit()
unit.addSource(args[0], src)
unit.compile(Phases.CONVERSION)
def module = unit.AST.modules[0]

def callName = { MethodCallExpression m -> m.methodAsString }

// the names of `params.X` read anywhere inside a node (a reusable workflow or process reads none)
def paramsRead = { ASTNode node ->
    def names = [] as TreeSet
    node.visit(new CodeVisitorSupport() {
        void visitPropertyExpression(PropertyExpression p) {
            if (p.objectExpression instanceof VariableExpression && p.objectExpression.name == 'params')
                names << p.propertyAsString
            super.visitPropertyExpression(p)
        }
    })
    return names as List
}

def describeProcess = { String name, ClosureExpression body ->
    def info = [name: name, directives: [:], sections: [:], emits: [], topics: [], text: '',
                inputs: [], outputs: [], when: null, params: paramsRead(body.code)]
    def label = null
    ((BlockStatement) body.code).statements.each { Statement st ->
        if (st.statementLabel) label = st.statementLabel
        if (!(st instanceof ExpressionStatement)) {
            if (label) info.sections[label] = (info.sections[label] ?: 0) + 1
            return
        }
        def e = ((ExpressionStatement) st).expression
        if (label == null && e instanceof MethodCallExpression) {
            info.directives[callName(e)] = e.arguments.text
        }
        if (label) info.sections[label] = (info.sections[label] ?: 0) + 1
        if (label == 'input' && e instanceof MethodCallExpression) info.inputs << e.text
        if (label == 'output' && e instanceof MethodCallExpression) info.outputs << e.text
        if (label == 'when') info.when = e.text
        if (label == 'output' && e instanceof MethodCallExpression) {
            e.arguments.each { a ->
                if (a instanceof MapExpression) a.mapEntryExpressions.each { me ->
                    if (me.keyExpression.text == 'emit') info.emits << me.valueExpression.text
                    if (me.keyExpression.text == 'topic') info.topics << me.valueExpression.text
                }
            }
        }
    }
    return info
}

def processes = []
def workflows = []
def functions = module.methods.collect { it.name }
module.statementBlock.statements.each { Statement st ->
    if (!(st instanceof ExpressionStatement)) return
    def e = ((ExpressionStatement) st).expression
    if (!(e instanceof MethodCallExpression)) return
    def kind = callName(e)
    if (kind == 'process' || kind == 'workflow') {
        def args = e.arguments.expressions
        def inner = args ? args[0] : null
        def name = null
        ClosureExpression body = null
        if (inner instanceof MethodCallExpression) {          // process NAME { ... }
            name = callName(inner)
            body = inner.arguments.expressions[0]
        } else if (inner instanceof ClosureExpression) {        // workflow { ... }
            name = ''
            body = inner
        }
        if (kind == 'process') processes << describeProcess(name, body)
        else {
            def statements = ((BlockStatement) body.code).statements
            def labels = statements.findAll { it.statementLabel }.collect { it.statementLabel }
            // the names a workflow takes: the statements of its take: section
            def take = []
            def label = null
            statements.each { Statement s ->
                if (s.statementLabel) label = s.statementLabel
                if (label == 'take' && s instanceof ExpressionStatement) take << s.expression.text
            }
            workflows << [name: name, labels: labels, take: take, params: paramsRead(body.code)]
        }
    }
}
println JsonOutput.toJson([processes: processes, workflows: workflows, functions: functions])
